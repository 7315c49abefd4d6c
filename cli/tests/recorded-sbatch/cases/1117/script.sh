#!/bin/bash
#PBS -l nodes=1:ppn=2:gpus=1
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
