#!/bin/bash
#PBS -l nodes=2:ppn=4
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
