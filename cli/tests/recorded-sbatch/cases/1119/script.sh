#!/bin/bash
#PBS -l nodes=2+1:ppn=2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
